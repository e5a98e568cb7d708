"""/queue-status: the fleet's queue now, the open incidents and their silences."""
