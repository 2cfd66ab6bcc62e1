// Compiled only to build the precompiled header (base/pch.h).
