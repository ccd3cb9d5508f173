from ragqa.cli import main

main()
