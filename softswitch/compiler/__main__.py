"""`python3 -m softswitch.compiler PROGRAM.p4 [-D NAME=VALUE]...`: print the generated Python."""
from softswitch.compiler.pipeline import main

main()
