"""The audit's Spark plumbing on the driver: the SparkSession, the JVM class-data archive, the executors'
Python daemon, stores and outputs named by URL."""
