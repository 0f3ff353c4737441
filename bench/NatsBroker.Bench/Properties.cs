[module: System.Runtime.CompilerServices.SkipLocalsInit]
