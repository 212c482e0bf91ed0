"""The model adapters and the HTTP machinery they share: requests, SSE, assembly, retries."""
