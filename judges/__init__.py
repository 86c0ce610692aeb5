"""View judges, recognition judge, audit logic and statistics (built in a later issue)."""
