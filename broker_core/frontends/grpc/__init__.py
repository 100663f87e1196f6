"""The gRPC front end (our client, the Spark connector, the jobs, the CLI)."""
