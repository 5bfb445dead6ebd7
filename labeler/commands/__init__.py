"""``goldpool`` subcommands, one module per stage. Each module exposes ``COMMANDS``."""
