# telastic (controller, or an agent image for nodes that run the workers themselves).
FROM node:20-bookworm-slim
WORKDIR /opt/telastic
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build
ENTRYPOINT ["node", "bin/telastic.js"]
