"""Pulsar's HTTP admin REST API (``/admin/v2/...``) over the broker core (see :mod:`.app`)."""
from broker_core.frontends.http.admin.access import public
from broker_core.frontends.http.admin.app import admin_app
from broker_core.frontends.http.admin.cluster_routes import Advertised

__all__ = ["Advertised", "admin_app", "public"]
