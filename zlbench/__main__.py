import sys

from zlbench.cli import main

sys.exit(main())
