from redagent.console.cli import main

main()
