from calib.cli import script_main

script_main()
