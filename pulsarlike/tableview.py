"""``pulsar.tableview``: the latest value per key of a compacted topic (``Client.create_table_view``)."""
from connector.client.table_view import TableView

__all__ = ["TableView"]
