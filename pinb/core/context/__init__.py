"""What the model sees: the context built from a leaf, the system prompt, tokens, one account."""
