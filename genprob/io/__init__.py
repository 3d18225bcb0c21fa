"""Input and output: model files and ArviZ."""
