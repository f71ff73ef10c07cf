from devlint.launch import main

main()
