"""What the user configured: providers and models, keys, Pi's config files, local servers' windows."""
