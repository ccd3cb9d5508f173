from ragqa.faces.cli import main

main()
