"""Task stores: where an A2A Task is saved. See :mod:`stores.base` for the interface."""
