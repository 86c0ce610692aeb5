"""The service surfaces: workspace, email, browser, banking, external files."""
