"""Models (calibration agents; litellm models next), harnesses and runners."""
