"""Reading the PR's title and description: perf claims, template sections, attribution."""
