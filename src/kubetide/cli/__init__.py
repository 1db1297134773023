"""The `kubetide` command line: one module per subcommand."""
