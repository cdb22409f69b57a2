"""recursor.orchestrator"""
