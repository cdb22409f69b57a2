"""recursor.archive"""
