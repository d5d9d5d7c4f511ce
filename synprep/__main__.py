from synprep.cli import main

main()
