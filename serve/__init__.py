"""ember on Ray Serve: serve.deployment (the deployments), serve.app (the entry point),
serve.payloads (the HTTP formats), serve.batching (requests to runs), serve.bench."""
