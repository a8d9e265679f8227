"""Plotting and widget helpers for the book's pages (kept out of :mod:`models`, which has no notebook concerns)."""
