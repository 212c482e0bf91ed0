"""The user's own Pi behind pinb: ``pi --mode rpc``, its framing, and its events as the agent's."""
