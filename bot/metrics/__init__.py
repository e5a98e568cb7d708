"""Fleet metrics: the Prometheus client, the query pack and the fleet simulator."""
