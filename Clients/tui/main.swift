print("nav-tui")
