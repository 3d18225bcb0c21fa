"""Inference on a story: optimizer, cross-check, NUTS, exact posteriors, draws."""
