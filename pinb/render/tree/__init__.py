"""The tree picture: annotated graph, lanes and rows, tidy layout, marks, SVG/PNG/text."""
