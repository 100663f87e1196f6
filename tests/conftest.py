pytest_plugins = ["tests.brokers"]
