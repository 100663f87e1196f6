"""The HTTP front end on the web service port (metrics, status)."""
