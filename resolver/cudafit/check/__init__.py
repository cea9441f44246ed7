"""`cudafit check`: readers that keep positions (requirements files, pyproject.toml, uv.lock,
pylock.toml, environment.yml), rules with stable codes, fixes and report formats. The entry
point is `runner.check_paths`."""
