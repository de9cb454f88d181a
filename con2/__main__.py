from con2.cli import main

raise SystemExit(main())
