"""`python -m kubetide ...`: the same as the `kubetide` command."""

from kubetide.cli.main import main

raise SystemExit(main())
