"""mqtool: admin and storage-inspection toolkit for Apache RocketMQ broker stores."""

__version__ = "0.1.0"
