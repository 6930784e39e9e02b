import sys

from helmflow.cli import main

sys.exit(main())
