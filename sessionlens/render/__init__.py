"""Renderers: views in, text out; they never write files."""
