# EVOLVE-BLOCK-START
VALUE = 1
# EVOLVE-BLOCK-END


def value():
    return VALUE
