"""``pulsarlike admin`` verbs for rate limits, resource groups and the broker's dynamic configuration, with
pulsar-admin's names and flags (its ``CmdNamespaces``, ``CmdTopics``, ``CmdTopicPolicies``, ``CmdBrokers``,
``CmdBrokerStats`` and ``CmdResourceGroups``):

    namespaces set-dispatch-rate NS [-md MSGS] [-bd BYTES] [-dt PERIOD_S] [-rp]
    namespaces set-subscription-dispatch-rate NS [-md MSGS] [-bd BYTES] [-dt PERIOD_S] [-rp]
    namespaces set-publish-rate NS [-m MSGS] [-b BYTES]             per second
    namespaces set-subscribe-rate NS [-sr SUBSCRIBES] [-st PERIOD_S]
    namespaces get-|remove-dispatch-rate ... (each of the four)
    namespaces set-resource-group NS -rgn GROUP | get-resource-group NS | remove-resource-group NS
    topics set-dispatch-rate|set-subscription-dispatch-rate|set-publish-rate|set-subscribe-rate TOPIC ...
    topics get-...-rate TOPIC [-ap] | remove-...-rate TOPIC
    topicPolicies the same verbs, with -g (global: refused, one cluster here) and, for the subscription
                  dispatch rate, -s SUBSCRIPTION (that subscription's own rate)
    brokers list-dynamic-config | get-all-dynamic-config | get-runtime-config
    brokers update-dynamic-config -c KEY -v VALUE | delete-dynamic-config -c KEY
    brokers backlog-quota-check | namespaces CLUSTER -u BROKER_ID
    broker-stats topics|destinations [-i] | monitoring-metrics [-i]
    resourcegroups list | get RG | create RG [-mp MSGS] [-bp BYTES] [-md MSGS] [-bd BYTES] | update RG ...
                   | delete RG

Rates of -1 (the defaults) are not limited. The namespace and topic verbs work over gRPC and ``--admin-url``
REST alike; the resource groups, the topic policies' ``-s``-less verbs aside, ``brokers`` and ``broker-stats``
need an HTTP admin URL (over ``pulsar://`` the Admin's ``NotSupported`` says so, exit 1). ``brokers namespaces``
takes the broker as ``-u`` only: ``--url`` is this tool's admin URL.
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from connector.cli import output

Verb = Callable[..., argparse.ArgumentParser]
RATES = ("dispatch-rate", "subscription-dispatch-rate", "publish-rate", "subscribe-rate")


def _method(rate: str) -> str:
    return rate.replace("-", "_")


def _rate_flags(p: argparse.ArgumentParser, rate: str) -> None:
    """pulsar-admin's flags of ``set-<rate>``, with its defaults."""
    if rate.endswith("dispatch-rate"):
        p.add_argument("-md", "--msg-dispatch-rate", dest="msg_rate", type=int, default=-1,
                       help="messages per period (default -1: not limited)")
        p.add_argument("-bd", "--byte-dispatch-rate", dest="byte_rate", type=int, default=-1,
                       help="bytes per period (default -1: not limited)")
        p.add_argument("-dt", "--dispatch-rate-period", dest="period_s", type=int, default=1,
                       help="the period in seconds (default 1)")
        p.add_argument("-rp", "--relative-to-publish-rate", dest="relative", action="store_true",
                       help="add the topic's publish rate to the rates at each period")
    elif rate == "publish-rate":
        p.add_argument("-m", "--msg-publish-rate", dest="msg_rate", type=int, default=-1,
                       help="messages per second (default -1: not limited)")
        p.add_argument("-b", "--byte-publish-rate", dest="byte_rate", type=int, default=-1,
                       help="bytes per second (default -1: not limited)")
    else:
        p.add_argument("-sr", "--subscribe-rate", dest="rate", type=int, default=-1,
                       help="subscribes per consumer per period (default -1: not limited)")
        p.add_argument("-st", "--subscribe-rate-period", dest="period_s", type=int, default=30,
                       help="the period in seconds (default 30)")


def _rate_args(rate: str, o: argparse.Namespace) -> dict[str, Any]:
    if rate.endswith("dispatch-rate"):
        return {"msg_rate": o.msg_rate, "byte_rate": o.byte_rate, "period_s": o.period_s,
                "relative_to_publish_rate": o.relative}
    if rate == "publish-rate":
        return {"msg_rate": o.msg_rate, "byte_rate": o.byte_rate}
    return {"rate": o.rate, "period_s": o.period_s}


def _no_global(o: argparse.Namespace) -> None:
    if getattr(o, "global_policy", False):
        raise ValueError("--global: global topic policies are replicated to other clusters; a pulsarlike broker is"
                         " its only cluster: leave -g out")


def _sub(o: argparse.Namespace) -> dict[str, Any]:
    subscription = getattr(o, "subscription", None)
    return {} if subscription is None else {"subscription": subscription}


# ====================================================================================== namespaces
def namespace_verbs(verb: Verb) -> None:
    for rate in RATES:
        m = _method(rate)
        p = verb(f"set-{rate}", lambda a, o, m=m, r=rate: getattr(a, f"set_namespace_{m}")(o.namespace,
                                                                                         **_rate_args(r, o)),
                 f"Set the namespace's {rate.replace('-', ' ')}", "namespace")
        _rate_flags(p, rate)
        verb(f"get-{rate}", lambda a, o, m=m: output.pulsar_json(getattr(a, f"get_namespace_{m}")(o.namespace)),
             f"The namespace's {rate.replace('-', ' ')} (null: not set)", "namespace")
        verb(f"remove-{rate}", lambda a, o, m=m: getattr(a, f"remove_namespace_{m}")(o.namespace),
             f"Remove the namespace's {rate.replace('-', ' ')}", "namespace")
    verb("set-resource-group", lambda a, o: a.set_namespace_resource_group(o.namespace, o.resource_group),
         "Attach the namespace to a resource group (--admin-url http://...)", "namespace").add_argument(
        "-rgn", "--resource-group-name", dest="resource_group", required=True, help="the resource group's name")
    verb("get-resource-group", lambda a, o: a.get_namespace_resource_group(o.namespace) or "null",
         "The namespace's resource group (--admin-url http://...)", "namespace")
    verb("remove-resource-group", lambda a, o: a.remove_namespace_resource_group(o.namespace),
         "Detach the namespace from its resource group (--admin-url http://...)", "namespace")


# ====================================================================================== topics, topicPolicies
def topic_verbs(verb: Verb, *, policies: bool = False) -> None:
    """The ``topics`` group's rate verbs, or (``policies``) the ``topicPolicies`` group's: ``-g`` on each and
    ``-s`` on the subscription dispatch rate's."""
    for rate in RATES:
        m = _method(rate)
        per_sub = policies and rate == "subscription-dispatch-rate"

        def set_rate(a: Any, o: argparse.Namespace, m: str = m, r: str = rate) -> None:
            _no_global(o)
            getattr(a, f"set_topic_{m}")(o.topic, **_rate_args(r, o), **_sub(o))

        def get_rate(a: Any, o: argparse.Namespace, m: str = m) -> str:
            _no_global(o)
            kwargs = {"applied": True} if getattr(o, "applied", False) else {}
            return output.pulsar_json(getattr(a, f"get_topic_{m}")(o.topic, **kwargs, **_sub(o)))

        def remove_rate(a: Any, o: argparse.Namespace, m: str = m) -> None:
            _no_global(o)
            getattr(a, f"remove_topic_{m}")(o.topic, **_sub(o))

        made = [verb(f"set-{rate}", set_rate, f"Set the topic's {rate.replace('-', ' ')}", "topic"),
                verb(f"get-{rate}", get_rate, f"The topic's {rate.replace('-', ' ')} (null: not set)", "topic"),
                verb(f"remove-{rate}", remove_rate, f"Remove the topic's {rate.replace('-', ' ')}", "topic")]
        _rate_flags(made[0], rate)
        if rate != "publish-rate":
            made[1].add_argument("-ap", "--applied", action="store_true",
                                 help="the value in force, inherited ones included (--admin-url only)")
        for p in made:
            if policies:
                p.add_argument("-g", "--global", dest="global_policy", action="store_true",
                               help="a global (replicated) policy: refused, one cluster here")
            if per_sub:
                p.add_argument("-s", "--subscription", default=None, help="only this subscription's own rate")


# ====================================================================================== brokers, broker-stats
def broker_verbs(verb: Verb) -> None:
    verb("list-dynamic-config", lambda a, o: output.lines(a.get_dynamic_configuration_names()),
         "The keys that may be changed while the broker runs")
    verb("get-all-dynamic-config", lambda a, o: output.pulsar_json(a.get_all_dynamic_configurations()),
         "The keys set dynamically and their values")
    verb("get-runtime-config", lambda a, o: output.pulsar_json(a.get_runtime_configurations()),
         "Every key's value in force")
    p = verb("update-dynamic-config", lambda a, o: a.update_dynamic_configuration(o.config, o.value),
             "Change a key while the broker runs (kept across restarts)")
    p.add_argument("-c", "--config", required=True, help="the key (list-dynamic-config lists them)")
    p.add_argument("-v", "--value", required=True, help="its new value")
    verb("delete-dynamic-config", lambda a, o: a.delete_dynamic_configuration(o.config),
         "Back to the configuration file's value").add_argument("-c", "--config", required=True, help="the key")
    verb("backlog-quota-check", lambda a, o: a.backlog_quota_check() or "ok",
         "Enforce every loaded topic's backlog quota now")
    p = verb("namespaces", lambda a, o: output.pulsar_json(a.get_owned_namespaces(o.cluster, o.broker)),
             "The namespaces a broker serves (-u only: --url is the admin URL here)")
    p.add_argument("cluster", help="cluster name")
    p.add_argument("-u", dest="broker", required=True, help="the broker's id, host:port (brokers list)")


def _indented(value: Any, indent: bool) -> str:
    return output.pulsar_json(value) if indent else json.dumps(value, separators=(",", ":"))


def broker_stats(verb: Verb) -> None:
    for name in ("topics", "destinations"):
        verb(name, lambda a, o: _indented(a.get_broker_topics_stats(), o.indent),
             "Every loaded topic's stats by namespace, bundle and domain").add_argument(
            "-i", "--indent", action="store_true", help="pretty-print")
    verb("monitoring-metrics", lambda a, o: _indented(a.get_broker_metrics(), o.indent),
         "The broker's metrics of each namespace").add_argument("-i", "--indent", action="store_true",
                                                               help="pretty-print")


# ====================================================================================== resourcegroups
def _group_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("resourcegroup", help="the resource group's name")
    for short, long, dest, what in (("-mp", "--msg-publish-rate", "publish_rate_in_msgs", "messages published"),
                                    ("-bp", "--byte-publish-rate", "publish_rate_in_bytes", "bytes published"),
                                    ("-md", "--msg-dispatch-rate", "dispatch_rate_in_msgs", "messages dispatched"),
                                    ("-bd", "--byte-dispatch-rate", "dispatch_rate_in_bytes", "bytes dispatched")):
        p.add_argument(short, long, dest=dest, type=int, default=None, help=f"{what} per second by the group's "
                       "topics together (-1: not limited)")


def _group_rates(o: argparse.Namespace) -> dict[str, Any]:
    return {"publish_rate_in_msgs": o.publish_rate_in_msgs, "publish_rate_in_bytes": o.publish_rate_in_bytes,
            "dispatch_rate_in_msgs": o.dispatch_rate_in_msgs, "dispatch_rate_in_bytes": o.dispatch_rate_in_bytes}


def resource_groups(verb: Verb) -> None:
    verb("list", lambda a, o: output.lines(a.get_resource_groups()), "List the resource groups")
    verb("get", lambda a, o: output.pulsar_json(a.get_resource_group(o.resourcegroup)),
         "A resource group's rates").add_argument("resourcegroup", help="the resource group's name")
    _group_flags(verb("create", lambda a, o: a.create_resource_group(o.resourcegroup, **_group_rates(o)),
                      "Create a resource group"))
    _group_flags(verb("update", lambda a, o: a.update_resource_group(o.resourcegroup, **_group_rates(o)),
                      "Change the rates given of a resource group"))
    verb("delete", lambda a, o: a.delete_resource_group(o.resourcegroup),
         "Delete a resource group (refused while a namespace or topic is attached)").add_argument(
        "resourcegroup", help="the resource group's name")
