"""Publishing on GitHub: the only stage that talks to the network.

`event` turns the Actions environment into a review request, `checks` posts the check run,
`commands` is the workflow-command and file-command fallback, `action_main` sequences them.
"""
