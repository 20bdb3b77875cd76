from arenatui.cli import main

raise SystemExit(main())
