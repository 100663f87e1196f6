"""The broker core every front end shares: the Topic protocol, sessions, topics (persistent/, nonpersistent/),
the registry, tenants and namespaces, policies and schemas."""
