from cudafit.cli import main

main()
