"""What every app stands on: settings, errors, observability, links, and the wiring of each
library's configuration objects from the settings."""
