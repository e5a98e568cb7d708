"""Where fleet data comes from: the Prometheus client and the query pack it runs."""
