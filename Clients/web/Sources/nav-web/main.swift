import NavWebServer

// nav-web's command (its options, the server, the relay) lives in NavWebServer, where its tests reach it.
NavWeb.runFromCommandLine()
