from helmflow.cli import entry

entry()
