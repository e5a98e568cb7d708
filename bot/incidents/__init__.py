"""The incident lifecycle: the pure rules (decide) and the service that stores their outcome."""
