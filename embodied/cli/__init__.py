"""The ``embodied`` command line: one command, one subcommand per job."""
