import sys

from grpo_core.cli import main

sys.exit(main())
