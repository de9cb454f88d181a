from con2.cli.main import main

raise SystemExit(main())
