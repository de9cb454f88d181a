"""maths."""
